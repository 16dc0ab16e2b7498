import assignments from '../../functions/assignments/app';
import audits from '../../functions/audits/app';
import forms from '../../functions/forms/app';
import submissions from '../../functions/submissions/app';
import exports from '../../functions/exports/app';
import entities from '../../functions/entities/app';
import projects from '../../functions/projects/app';
import users from '../../functions/users/app';
import { dispatcher } from '../../lib/http/dispatch';

/** Every group app behind the route table: what `npm start` serves and what tests call over HTTP. */
export const localApp = () => dispatcher({ projects, assignments, users, audits, forms, submissions, exports, entities });
