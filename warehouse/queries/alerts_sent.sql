-- alerts_sent: every change already told (tasks/alerts/policy.py reads it to tell each change once).
with s as (
    select key, fingerprint, episode, event, target, occurred_at, sent_at, event_id, source,
           cast(payload as varchar) as payload
    from alerts_sent
),
final as (
    select * from s order by sent_at, key, fingerprint
)
select * from final
