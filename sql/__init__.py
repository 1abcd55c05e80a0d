"""Numbered SQL migrations, shipped as package data so an installed hippobot finds them."""
