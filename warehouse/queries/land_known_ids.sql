-- land_known_ids: which of the given bundle ids the warehouse already holds, and where.
with ids as (
    select unnest(?::varchar[]) as bundle_id
),
landed as (
    select r.run_id as bundle_id, 'landed' as state, null::varchar as reason
    from runs as r semi join ids on ids.bundle_id = r.run_id
),
held as (
    select q.bundle_id, q.kind as state, q.reason
    from quarantine as q semi join ids on ids.bundle_id = q.bundle_id
),
final as (
    select * from landed union all select * from held
)
select * from final
