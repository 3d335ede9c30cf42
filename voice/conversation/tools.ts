// The tools a call's model is offered that the engine runs over HTTP (issue 9): the
// number's custom functions and its automation integration's in-call webhook. Each
// becomes an OpenAI function tool (name, description, JSON-Schema parameters) and an
// endpoint the engine POSTs `{call_id, agent_id, name, arguments}` to (contract.md 9).
// Pure: rows in, definitions out.
import type { LlmTool } from '../providers/llm.ts';
import { SEND_SMS_TOOL } from './sms-tool.ts';

/** The in-call webhook's tool name (snake_case like custom functions; a function of this name is shadowed). */
export const AUTOMATION_TOOL = 'automation_webhook';

/** Names the engine's own tools use; a custom function may not take them. */
export const ENGINE_TOOL_NAMES: ReadonlySet<string> = new Set(['end_call', 'transfer_call', SEND_SMS_TOOL, AUTOMATION_TOOL]);

/** Rounds of tool calls in one caller turn before the model is asked to answer without tools. */
export const MAX_TOOL_ROUNDS_PER_TURN = 3;

/** A tool the engine runs by POSTing to `url`. */
export interface HttpTool {
  name: string;
  url: string;
  definition: LlmTool;
}

export interface CustomFunctionDef {
  name: string;
  url: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
}

/** An arguments schema that takes no arguments (a function stored without one). */
const NO_ARGUMENTS = { type: 'object', properties: {}, additionalProperties: false };

/**
 * The HTTP tools of a call, in the order the model is offered them: the custom
 * functions (oldest first), then the in-call webhook. A function whose name an engine
 * tool uses is left out (the engine's own tool keeps its meaning).
 */
export function httpTools(functions: readonly CustomFunctionDef[], inCallUrl: string | null): HttpTool[] {
  const tools: HttpTool[] = [];
  for (const f of functions) {
    if (ENGINE_TOOL_NAMES.has(f.name)) continue;
    tools.push({
      name: f.name,
      url: f.url,
      definition: {
        type: 'function',
        function: {
          name: f.name,
          description: f.description?.trim() || `Calls the business's "${f.name}" function and returns its answer.`,
          parameters: f.parameters ?? NO_ARGUMENTS,
        },
      },
    });
  }
  if (inCallUrl) {
    tools.push({
      name: AUTOMATION_TOOL,
      url: inCallUrl,
      definition: {
        type: 'function',
        function: {
          name: AUTOMATION_TOOL,
          description:
            "Ask the business's own systems during the call: to look something up you do not know (an order, an account, availability, a price) " +
            'or to have something done for the caller (record a request, a callback, a change). Use it when the caller needs information or an action ' +
            'that is not in your instructions. Its answer is JSON; tell the caller what it means in plain words.',
          parameters: {
            type: 'object',
            properties: {
              request: { type: 'string', description: 'What you need, in one sentence (e.g. "status of order 4417").' },
              details: { type: 'object', description: 'Anything the caller gave that helps (names, numbers, dates), as key-value pairs.', additionalProperties: true },
            },
            required: ['request'],
          },
        },
      },
    });
  }
  return tools;
}

/** Filler lines said while a tool runs: the first, then the later ones in turn. */
export const FILLERS = ['One moment while I check that.', 'Thanks for waiting, I am still checking.', 'Still working on it, just a moment more.'] as const;

export function fillerText(index: number): string {
  return index === 0 ? FILLERS[0] : FILLERS[1 + ((index - 1) % (FILLERS.length - 1))]!;
}
