-- rerun_rate: per target and window, how often Prefect had to run a probe again.
-- Counts the attempts Prefect recorded (source = 'prefect'): the probe flow runs themselves
-- (task = 'probe_flow', crashed and cancelled ones included) and their task runs' tries.
-- $1: window length in days; $2: as-of timestamp (windows end there, newest first).
with params as (
    select $1::integer as window_days, coalesce($2::timestamptz, now()) as as_of
),
prefect_attempts as (
    select a.target, a.task, a.state, a.error_kind, a.started_at,
           floor(epoch(p.as_of - a.started_at) / (86400 * p.window_days))::integer as window_index,
           p.window_days, p.as_of
    from attempts as a, params as p
    where a.source = 'prefect' and a.started_at is not null and a.started_at <= p.as_of
),
per_window as (
    select target, window_index,
           any_value(as_of) - to_days((window_index + 1) * any_value(window_days)) as window_start,
           any_value(as_of) - to_days(window_index * any_value(window_days)) as window_end,
           count(*) filter (where task = 'probe_flow') as flow_attempts,
           count(*) filter (where task = 'probe_flow' and state <> 'completed') as flow_reruns,
           count(*) filter (where task = 'probe_flow' and state = 'crashed') as flow_crashed,
           count(*) filter (where task = 'probe_flow' and state = 'cancelled') as flow_cancelled,
           count(*) filter (where task <> 'probe_flow') as task_attempts,
           count(*) filter (where task <> 'probe_flow' and state <> 'completed') as task_reruns,
           count(*) as attempts,
           count(*) filter (where state <> 'completed') as reruns
    from prefect_attempts
    group by target, window_index
),
final as (
    select target, window_start, window_end, attempts, reruns,
           reruns / attempts::double as rerun_rate,
           flow_attempts, flow_reruns, flow_crashed, flow_cancelled,
           flow_reruns / nullif(flow_attempts, 0)::double as flow_rerun_rate,
           task_attempts, task_reruns
    from per_window
)
select * from final order by target, window_start desc
