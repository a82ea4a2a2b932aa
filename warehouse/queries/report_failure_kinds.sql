-- Failure kinds per target over all time, with the task that failed most and a sample message.
with f as (
    select target, coalesce(error_kind, 'other') as error_kind, task, message
    from attempts
    where state in ('failed', 'crashed')
),
final as (
    select target, error_kind, count(*) as failures, mode(task) as task, any_value(message) as example
    from f
    group by target, error_kind
)
select * from final order by target, failures desc, error_kind
