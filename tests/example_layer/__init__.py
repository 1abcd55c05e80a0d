"""An example memory layer, shipped outside the project's packages: the whole of what adding a layer takes.

``ExampleLayer`` notes how many words each absorbed person message has. It owns its table (``schema.sql``,
installed by the layer itself), recalls its notes for the audience asking, lets forgetting take them, and
runs one dream step. Registering it is one entry: ``App.open(..., layers=[ExampleLayer])``.
"""

from tests.example_layer.layer import ExampleLayer

__all__ = ["ExampleLayer"]
