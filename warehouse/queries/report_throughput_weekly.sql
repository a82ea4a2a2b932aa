-- Fine-tune tokens/s per target, preset and week (median over successful fine-tunes) since $since.
with f as (
    select r.target, f.preset, date_trunc('week', r.started_at) as week, f.tokens_per_s
    from finetunes f
    join runs r using (run_id)
    where f.status in ('ok', 'unstable') and f.tokens_per_s is not null and r.started_at >= $since
),
final as (
    select target, preset, week, median(tokens_per_s) as tokens_per_s, count(*) as runs
    from f
    group by target, preset, week
)
select * from final order by target, preset, week
