"""Predictions: what costgap says before it has measured (single-GPU estimates, their calibration,
the candidates table, the track record that scores them, and the gap's evidence). Sits above
tasks/cost/, which holds only what measured figures need."""
