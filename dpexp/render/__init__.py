"""Figures (matplotlib, PDF + PNG) and tables (Markdown, CSV, LaTeX) from cached results."""
