"""``python -m bot.llama_server [llama_cpp.server options]``: llama-cpp-python's OpenAI-compatible server,
loading models the way the bot's own llama.cpp engine does (``bot.llm_llamacpp``): with llama.cpp's extra CPU
buffer types off on a CPU with AMX tiles, where their kernels crash on the first decode. Everything else is
``python -m llama_cpp.server`` as it is; the tests and bench/engines.py start the server this way."""

from __future__ import annotations

import runpy

from bot.config import Settings
from bot.llm_llamacpp import disable_extra_buffers, extra_buffers_wanted


def main() -> None:
    if not extra_buffers_wanted(Settings().llamacpp_extra_buffers):
        disable_extra_buffers()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
