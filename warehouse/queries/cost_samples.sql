-- cost_samples: the per-run tokens/s behind each (target, preset) median, sorted for the bootstrap.
with final as (
    select target, preset, tokens_per_s
    from _cost_runs
    order by target, preset, tokens_per_s
)
select * from final
