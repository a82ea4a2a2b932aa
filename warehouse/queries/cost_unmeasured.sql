-- cost_unmeasured: per (period, target, preset) of _cost_windows (cost_windows.sql) whose fine-tunes in the
-- window all failed or were not applicable: no measured run of it in _cost_runs (cost_priced_runs.sql), so no
-- cost, and the row says why (issue 37.5). The newest such fine-tune gives the reason (its status and
-- message). A skipped preset was not asked for and is not listed.
with ft as (
    select w.period, r.run_id, r.target, f.preset, r.started_at, f.status, f.message
    from runs r
    join finetunes f using (run_id)
    join _cost_windows w on r.started_at > w.window_start and r.started_at <= w.window_end
    where f.status in ('failed', 'not_applicable')
      and r.started_at > $start and r.started_at <= $end
      and ($targets is null or list_contains($targets, r.target))
),
unmeasured as (
    select ft.*
    from ft
    anti join _cost_runs c on c.period = ft.period and c.target = ft.target and c.preset = ft.preset
),
final as (
    select period, target, preset, count(distinct run_id) as unmeasured_runs,
           arg_max(status, started_at) as finetune_status, arg_max(message, started_at) as finetune_message,
           max(started_at) as last_run_at
    from unmeasured
    group by period, target, preset
    order by period, target, preset
)
select * from final
