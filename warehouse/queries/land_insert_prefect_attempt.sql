-- land_insert_prefect_attempt: one attempt seen by Prefect, unless that (source_id, task, attempt)
-- is already recorded. $1..$10: run_id, target, task, attempt, state, error_kind, message,
-- duration_s, started_at, source_id.
insert into attempts (run_id, target, task, attempt, state, error_kind, message, duration_s,
                      started_at, source, source_id)
with candidate as (
    select $1::varchar as run_id, $2::varchar as target, $3::varchar as task,
           $4::integer as attempt, $5::varchar as state, $6::varchar as error_kind,
           $7::varchar as message, $8::double as duration_s, $9::timestamptz as started_at,
           'prefect' as source, $10::varchar as source_id
),
final as (
    select c.* from candidate as c
    anti join attempts as a
      on a.source = 'prefect' and a.source_id is not distinct from c.source_id
     and a.task = c.task and a.attempt = c.attempt and a.target = c.target
)
select * from final
