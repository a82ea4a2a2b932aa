-- measuring_insert: one dispatched probe run's instance span; a repeat (flow retry) replaces it.
-- $1..$8: compare_run_id, target, dispatch, probe_flow_run_id, span_source, started_at, finished_at,
-- instance_seconds.
insert or replace into measuring_runs (compare_run_id, target, dispatch, probe_flow_run_id, span_source,
                                       started_at, finished_at, instance_seconds)
with final as (
    select $1::varchar, $2::varchar, $3::varchar, $4::varchar, $5::varchar, $6::timestamptz, $7::timestamptz,
           $8::double
)
select * from final
