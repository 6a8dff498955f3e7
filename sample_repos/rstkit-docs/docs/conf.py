# Sphinx configuration for the rstkit documentation.

project = "rstkit"
author = "The rstkit contributors"
release = "1.4.0"
version = "1.4"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
]

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
}

exclude_patterns = ["_build", "_includes"]
html_theme = "alabaster"
default_role = "any"
nitpicky = True
