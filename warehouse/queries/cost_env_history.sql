-- cost_env_history: measured fine-tune runs (ok or unstable) with the environment fields a change is reported on,
-- in time order per (target, preset). Feeds tasks/cost/changepoint.py.
with ft as (
    select r.run_id, r.target, f.preset, r.started_at, f.tokens_per_s, r.environment_id
    from runs r
    join finetunes f using (run_id)
    where f.status in ('ok', 'unstable') and f.tokens_per_s > 0  -- measured (issue 37.5)
      and ($since is null or r.started_at > $since)
      and ($until is null or r.started_at <= $until)
      and ($targets is null or list_contains($targets, r.target))
      and ($preset is null or f.preset = $preset)
    -- the instance-level figure per (run, preset), as in cost_runs.sql
    qualify row_number() over (partition by r.run_id, f.preset
                               order by coalesce(f.n_gpus, 1) desc, f.tokens_per_s desc) = 1
),
final as (
    select ft.*, e.driver, e.cuda_driver, e.cuda_runtime, e.cudnn, e.torch, e.container_image
    from ft
    left join environments e using (environment_id)
    order by ft.target, ft.preset, ft.started_at, ft.run_id
)
select * from final
