-- The quarantine list, newest first, with the reason; `total` is the full count.
with q as (
    select bundle_id, target, source_uri, reason, cast(failed as varchar) as failed, quarantined_at
    from quarantine
),
final as (
    select *, count(*) over () as total from q order by quarantined_at desc limit $limit
)
select * from final
