CREATE TABLE "login_failures" (
	"key" text PRIMARY KEY NOT NULL,
	"failures" integer NOT NULL,
	"first_failed_at" timestamp (3) with time zone NOT NULL,
	"locked_until" timestamp (3) with time zone
);
