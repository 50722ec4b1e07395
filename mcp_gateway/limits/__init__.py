"""What may run now: rate limits per minute and call quotas per day and month."""
