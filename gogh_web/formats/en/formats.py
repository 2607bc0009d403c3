# Admin lists and read-only fields show times with seconds and their zone (TIME_ZONE, UTC).
DATETIME_FORMAT = "Y-m-d H:i:s T"
