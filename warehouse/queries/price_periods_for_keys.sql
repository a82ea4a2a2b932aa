-- price_periods_for_keys: every period of the price keys an import touches (registered as
-- _wanted_price_keys by tasks/pricing/book.py), oldest first, so the import can place its rows.
with final as (
    select p.*
    from prices p
    join _wanted_price_keys w using (provider, region, instance_type, billing_mode)
    order by p.effective_from
)
select * from final
