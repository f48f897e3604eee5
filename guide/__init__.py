"""The user guide at /help/: docs/guide/*.md rendered as pages of the app."""
