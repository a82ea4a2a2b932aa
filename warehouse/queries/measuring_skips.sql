-- measuring_skips: targets skipped for a budget since $since, newest first (the site's lines).
with final as (
    select target, scope, month, currency, budget, spent, expected, message, skipped_at, compare_run_id
    from dispatch_skips
    where skipped_at >= $since
    order by skipped_at desc, target
)
select * from final
