-- dispatches_insert: one target's outcome in one compare run; a repeat (flow retry) replaces it.
-- $1..$9: compare_run_id, target, dispatch, status, probe_flow_run_id, run_id, message,
-- started_at, finished_at.
insert or replace into dispatches (compare_run_id, target, dispatch, status, probe_flow_run_id,
                                   run_id, message, started_at, finished_at)
with final as (
    select $1::varchar, $2::varchar, $3::varchar, $4::varchar, $5::varchar, $6::varchar,
           $7::varchar, $8::timestamptz, $9::timestamptz
)
select * from final
