"""The commands an alert shows: the details they are filled from, and the filling (knowledge-base templates)."""
