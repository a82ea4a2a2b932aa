-- land_insert_quarantine: bundles that failed validation and files rejected as unreadable.
insert into quarantine (bundle_id, source_uri, target, reason, failed, raw, quarantined_at,
                        kind, field, batch_id)
with batch as (
    select *, row_number() over (partition by bundle_id) as n from batch_quarantine
),
final as (
    select b.bundle_id, b.source_uri, b.target::varchar, b.reason, b.failed::json, b.raw::varchar,
           b.quarantined_at::timestamptz, b.kind, b.field::varchar, b.batch_id
    from batch as b
    anti join quarantine as q on q.bundle_id = b.bundle_id
    where b.n = 1
)
select * from final
