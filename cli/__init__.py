"""The doors that run as commands: ``doc-index`` (command.py), the git hook runner and
the demo."""
