/**
 * A schema-file field that holds a regular expression (JavaScript syntax, `u` flag), checked at load time. Here,
 * outside runner/config/, so that job kinds (jobs/) use it without importing the config loader that imports them.
 */
import { z } from 'zod';

/**
 * A string that compiles as `new RegExp(s, 'u')`; otherwise the load fails with "is not a valid regular
 * expression" at the field's file:line:col.
 */
export const regexString = z.string().refine(
  (s) => {
    try {
      new RegExp(s, 'u');
      return true;
    } catch {
      return false;
    }
  },
  { message: 'is not a valid regular expression' },
);
