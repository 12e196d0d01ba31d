"""Planning the rating study before it starts, and measuring the gate's error rates, by simulating whole studies
through the gate's own functions.

    model       the simulated study (pass rates, identical outputs, pair correlation, rater accuracy, rater main
                and rater x path effects) and its answers
    pilot       that model's numbers from a pilot in the database
    search      the planned sample size: search, confirmation on fresh studies, the false-KEEP check
    errorbench  false-KEEP rate and power over a grid of study models (scripts/errorbench.py)
    ppibench    the same for prediction-powered inference, with a simulated pre-screen (scripts/ppibench.py)
"""

from .model import DEFAULT_ACCURACY, DEFAULT_PASS_RATE, DEFAULT_RATERS, StudyModel, simulate, simulate_answers
from .pilot import model_from_db, pilot_effects, rater_spread_oneway
from .request import plan_from_config
from .search import MIN_CONFIRM, Plan, PlanRow, Rate, criterion_passes, format_plan, normal_guess, plan_study, run_studies

__all__ = [
    "plan_from_config",
    "DEFAULT_ACCURACY", "DEFAULT_PASS_RATE", "DEFAULT_RATERS", "MIN_CONFIRM", "Plan", "PlanRow", "Rate", "StudyModel",
    "criterion_passes", "format_plan", "model_from_db", "normal_guess", "pilot_effects", "plan_study",
    "rater_spread_oneway", "run_studies", "simulate", "simulate_answers",
]
