-- cost_windows: the windows a cost is computed over, newest first: window k is
-- ($end - k * $step_us - $period_us, $end - k * $step_us]. One window is the case $periods = 1; the gap
-- over time uses $periods windows of 30 days stepped by a week. Materialised as temp table _cost_windows
-- by tasks/cost/inputs.py; cost_priced_runs.sql and cost_inputs.sql join it.
with final as (
    select k as period,
           cast($end as timestamptz) - to_microseconds(k * $step_us + $period_us) as window_start,
           cast($end as timestamptz) - to_microseconds(k * $step_us) as window_end
    from range(0, $periods) t(k)
)
select * from final
