-- price_book: the price book for `costgap prices list`; $all = false shows only open periods.
with book as (
    select provider, region, instance_type, billing_mode, currency, price_per_hour, original_amount,
           original_period, effective_from, effective_to, source, last_seen_at
    from prices
    where $all or effective_to is null
),
final as (
    select * from book order by provider, region, instance_type, billing_mode, effective_from
)
select * from final
