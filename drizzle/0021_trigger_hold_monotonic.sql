ALTER TABLE "ups_monitor_state" ADD COLUMN "latch_dormant" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "ups_monitor_state" ADD COLUMN "durations" jsonb DEFAULT '{"onBatteryMs":null,"mainsMs":null,"alarmMs":null}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "ups_monitor_state" ADD COLUMN "pending_triggers" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
-- Rows written before durations existed: what their wall-clock columns said at their last write.
UPDATE "ups_monitor_state" SET "durations" = jsonb_build_object(
  'onBatteryMs', CASE WHEN "on_battery_since" IS NULL THEN NULL ELSE greatest(0, extract(epoch FROM ("updated_at" - "on_battery_since")) * 1000) END,
  'mainsMs', CASE WHEN "mains_since" IS NULL THEN NULL ELSE greatest(0, extract(epoch FROM ("updated_at" - "mains_since")) * 1000) END,
  'alarmMs', CASE WHEN "alarm_since" IS NULL THEN NULL ELSE greatest(0, extract(epoch FROM ("updated_at" - "alarm_since")) * 1000) END
);
