-- The quarantine list, newest first, with the reason; `total` is the full count. kind tells a bundle
-- that failed validation ('quarantined') from a file that was not a bundle at all ('rejected').
with q as (
    select bundle_id, kind, target, source_uri, reason, field, cast(failed as varchar) as failed, quarantined_at
    from quarantine
),
final as (
    select *, count(*) over () as total from q order by quarantined_at desc, bundle_id limit $limit
)
select * from final
