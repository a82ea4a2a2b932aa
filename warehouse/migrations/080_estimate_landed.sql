-- 080_estimate_landed: an estimate is scored against what the estimator could have seen (issue 37.6):
-- the first measurement of its (target, preset) that *landed* after the estimate was recorded, whatever
-- the run's own start time (bundles measured an hour before the estimate but imported after it count).
-- measured_at stays the end of the cost window the measurement is read over (the newest start among the
-- runs of that landing); this column says when that landing happened. Owner: tasks/cost/estimate_track.py.
alter table estimates add column measurement_landed_at timestamptz;
