-- land_insert_runs: the batch's accepted runs (frame batch_runs) into runs.
insert into runs (run_id, target, profile, probe_version, environment_id, started_at, finished_at,
                  status, origin_kind, flow_run_id, deployment, source_uri, landed_at)
with final as (
    select run_id, target, profile, probe_version, environment_id,
           started_at::timestamptz, finished_at::timestamptz, status, origin_kind,
           flow_run_id::varchar, deployment::varchar, source_uri, landed_at::timestamptz
    from batch_runs
)
select * from final
