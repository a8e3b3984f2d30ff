"""What the words of a log say where the rules are silent: the text model and its reading of a log."""
