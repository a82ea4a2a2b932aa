-- report_failure_kinds: per target, each kind of failed fine-tune attempt in ($start, $end] as a rate of
-- the target's counted fine-tune attempts there (the attempts that enter p: view finetune_attempts), with
-- the task that failed most and an example message. Rates, not counts: targets run 30x apart.
with w as (
    select * from finetune_attempts where attempted_at > $start and attempted_at <= $end
),
totals as (
    select target, count(*) as attempts from w group by target
),
kinds as (
    select target, error_kind, count(*) as failures, mode(task) as task, any_value(message) as example
    from w
    where failed
    group by target, error_kind
),
final as (
    select k.target, k.error_kind, k.failures, t.attempts, k.failures / t.attempts::double as rate, k.task, k.example
    from kinds k
    join totals t using (target)
)
select * from final order by target, rate desc, error_kind
