-- land_insert_attempts: every try of every task in the batch's accepted bundles.
insert into attempts (run_id, target, task, attempt, state, error_kind, message, duration_s,
                      started_at, source, source_id)
with final as (
    select run_id, target, task, attempt::integer, state, error_kind::varchar, message::varchar,
           duration_s::double, started_at::timestamptz, source, source_id::varchar
    from batch_attempts
)
select * from final
