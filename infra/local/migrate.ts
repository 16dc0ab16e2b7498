/** `npm run db:migrate`: apply the Drizzle migrations and sync the system roles, then exit. */
import { loadConfig, processEnv } from '../../lib/runtime/env';
import { openDatabase } from '../../lib/runtime/node';

const config = loadConfig(processEnv());
const database = await openDatabase(config);
try {
  await database.migrate();
  console.log(`Migrations applied (${database.kind}).`);
} finally {
  await database.close();
}
