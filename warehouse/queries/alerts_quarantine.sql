-- alerts_quarantine: bundles quarantined (parsed, failed validation) or rejected (not a bundle) since
-- $since, oldest first.
with q as (
    select bundle_id, kind, target, source_uri, reason, field, quarantined_at
    from quarantine
    where quarantined_at >= $since
),
final as (
    select * from q order by quarantined_at, bundle_id
)
select * from final
