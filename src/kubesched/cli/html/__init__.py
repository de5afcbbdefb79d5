"""`--html FILE`: one self-contained page (inline CSS, JS and data, nothing fetched)
showing a simulation, its explanations and capacity results."""

from kubesched.cli.html.report import (
    capacity_page,
    render_page,
    simulation_page,
    write_page,
)

__all__ = ["capacity_page", "render_page", "simulation_page", "write_page"]
