-- estimate_fleet_attempts: every fine-tune attempt of every target and preset (the view finetune_attempts says
-- what counts), and how many failed: the fleet-wide failure rate a prediction for an unmeasured type uses when
-- it has no preset of its own (tasks/estimate/pair.py: a model size no preset ran).
with final as (
    select count(*) as attempts, count(*) filter (where failed) as failed_attempts
    from finetune_attempts
)
select * from final
