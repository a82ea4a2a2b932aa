-- cost_samples: the per-run tokens/s behind each (target, preset) median, grouped in cost_summary's
-- (target, preset) order and sorted within each group, for the bootstrap (tasks/cost/stats.py).
with final as (
    select tokens_per_s
    from _cost_runs
    order by target, preset, tokens_per_s
)
select * from final
