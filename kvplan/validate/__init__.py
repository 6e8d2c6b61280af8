"""Live validation: a torch reference decoder built from a ModelSpec, measured against the plan.

The only package that imports torch, and only inside functions that run a measurement.
"""
