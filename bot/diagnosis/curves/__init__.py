"""Training curves: read from whatever a job printed (reader, tables, steps, series) and judged (facts, finding,
loss_findings, validation_findings) into the facts underfitting and overfitting signals use."""
