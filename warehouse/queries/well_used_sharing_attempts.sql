-- well_used_sharing_attempts: per target and sharing preset, the attempts of the sharing part
-- (task 'sharing:<preset>') up to $as_of: k failed of n counted, as finetune_attempts (migration 065)
-- counts a fine-tune's (skipped / not_applicable / cancelled are not attempts at the work). They give the
-- shared cost its rerun factor R (tasks/cost/shared.py), never the single-job figure's.
with counted as (
    select a.target, substr(a.task, length('sharing:') + 1) as preset, a.state
    from attempts a
    left join runs r using (run_id)
    where starts_with(a.task, 'sharing:')
      and a.state not in ('skipped', 'not_applicable', 'cancelled')
      and (cast($as_of as timestamptz) is null or coalesce(r.started_at, a.started_at) <= cast($as_of as timestamptz))
),
final as (
    select target, preset, count(*) as attempts, count(*) filter (where state in ('failed', 'crashed')) as failed
    from counted
    group by target, preset
)
select * from final order by target, preset
