"""Rating: the queue and the reveal, who may rate, rate limits, time on task."""
