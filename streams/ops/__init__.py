"""Operations: embedded services, topic administration, demo, lag and metrics."""
