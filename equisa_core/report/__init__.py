"""The self-contained HTML report of one run. Pure: report JSON in, one HTML string out."""

from equisa_core.report.html import render_report
from equisa_core.report.svg import confidence_plot

__all__ = ["render_report", "confidence_plot"]
