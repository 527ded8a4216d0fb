"""One module per raw source; each turns the tool's own output into plain rows or a DataFrame."""
