-- alerts_insert_sent: record one told change; telling the same (key, fingerprint) twice keeps the first.
-- $1..$10: key, fingerprint, episode, event, target, occurred_at, sent_at, event_id, source, payload (JSON text).
insert or ignore into alerts_sent (key, fingerprint, episode, event, target, occurred_at, sent_at, event_id,
                                   source, payload)
with final as (
    select $1::varchar, $2::varchar, $3::varchar, $4::varchar, $5::varchar, $6::timestamptz, $7::timestamptz,
           $8::varchar, $9::varchar, $10::json
)
select * from final
