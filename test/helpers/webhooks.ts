// A call stack (helpers/calls.ts) whose webhooks reach a real HTTPS receiver: the
// receiver's certificate is made by a test CA, the service trusts that CA through its
// webhook agent and may deliver to a private address (the receiver is on loopback).
// Shared by the suites that read the webhooks a call sends.
import { startCallStack, type CallStack } from './calls.ts';
import { agentTrusting, makeTestCa, startWebhookReceiver, type WebhookReceiver } from '../sim/webhook-receiver.ts';

export interface WebhookCallStack {
  stack: CallStack;
  receiver: WebhookReceiver;
  /** Stops the stack and the receiver, and removes the CA's files. */
  close(): Promise<void>;
}

/** The receiver, then the stack with `env` (webhook retries and timeouts, …) over ALLOW_PRIVATE_NETWORK_TARGETS. */
export async function startWebhookCallStack(env: Record<string, string>): Promise<WebhookCallStack> {
  const ca = makeTestCa();
  let receiver: WebhookReceiver | undefined;
  let stack: CallStack | undefined;
  const close = async (): Promise<void> => {
    await stack?.close();
    await receiver?.close();
    ca.dispose();
  };
  try {
    receiver = await startWebhookReceiver(ca);
    stack = await startCallStack({ ALLOW_PRIVATE_NETWORK_TARGETS: 'true', ...env }, undefined, { webhookAgent: agentTrusting(ca) });
  } catch (err) {
    await close();
    throw err;
  }
  return { stack, receiver, close };
}
