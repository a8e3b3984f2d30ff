"""Readers of a diagnosis's decisive lines: what a permission or quota refusal names (principal, permission,
resource, quota metric, region) beyond what the signals' patterns capture, and the regex parts they share."""
