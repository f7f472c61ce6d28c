// Which ids an execution's requests and responses may name: the rules every
// backend checks before a write trusts an id its caller made up
// (docs/storage_contract.md, "Requests and responses").
//
// An execution requests children and delays in a join set; their ids are
// derived from it (ExecutionIdDerived / DelayId name the requesting
// execution and the join set). A response is admitted only for something
// its execution requested, in the join set it was requested in:
//  - a delay response: the execution's log holds the DelayRequest of that
//    delay id in that join set (a live timer, until its first response);
//  - a child response: the child exists and was created by that execution's
//    request in that join set.
// The pure halves of those rules are here; the "was it requested" lookups
// are each backend's own (a live timer or a child row on SQL, the log in
// the memory reference model), as the backends store different things.
//
// Threading: pure functions.
#pragma once

#include <vector>

#include "base/result.h"
#include "core/execution_event.h"
#include "storage/db_errors.h"
#include "storage/requests.h"

namespace stele::storage {

// A Created event must be readable back and route its result: params are a
// JSON array (ValidationFailed "params must be a JSON array, got <type>"),
// and `parent` is set exactly for a derived id, to the execution and join
// set the id names (ValidationFailed). Every backend checks it for every
// execution it creates.
Result<void, DbErrorWriteNonRetriable> ValidateCreateRequest(const CreateRequest& req);

// DbConnection::Create: ValidateCreateRequest, and no parent — a child is
// created only by its parent's write that requests it (ValidateChildCreation);
// otherwise its parent's log would not know it (ValidationFailed).
Result<void, DbErrorWriteNonRetriable> ValidateStandaloneCreate(const CreateRequest& req);

// An event appended to `execution_id`: never Created (ValidationFailed
// "cannot append a Created event; use Create"), and a JoinSetRequest names
// a child or delay of `execution_id` in its own join set
// (ValidationFailed "... does not belong to ...").
Result<void, DbErrorWriteNonRetriable> ValidateAppendRequest(const ExecutionId& execution_id,
                                                             const AppendRequest& req);

// The children created by one write of `parent`: each child (a request with
// `parent` set) is requested by a ChildExecutionRequest among `events`, the
// parent's events of the same write, in the join set its id names
// (ValidationFailed otherwise). Top-level executions created alongside
// (scheduled ones) need no request.
Result<void, DbErrorWriteNonRetriable> ValidateChildCreation(
    const ExecutionId& parent, const std::vector<AppendRequest>& events,
    const std::vector<CreateRequest>& children);

// A response written to `execution_id` names a delay or child of it in the
// response's join set; otherwise NotFound (no such request; nothing may be
// written). The backend still checks that the request exists.
Result<void, DbErrorWrite> CheckResponseAddressee(const ExecutionId& execution_id,
                                                  const core::JoinSetResponseEvent& response);

// Messages (DbConnection::AppendMessage) answer no request: any execution
// may receive them, on any channel. Their rules, in the order every backend
// applies them:
// - ValidateMessage: the join set is a channel's (`m:<channel>`, a valid
//   channel) and the message id valid (ValidationFailed otherwise);
// - then the execution must exist (NotFound);
// - RedeliveryOutcome: a message id the execution received before (as
//   `existing`) answers kAlreadyDelivered when channel and body are the
//   same, Conflict otherwise — before the finished check, so that a sender
//   retrying after a crash gets the same answer once the receiver finished;
// - then a finished execution is IllegalState("already finished")
//   (FinishedRefusesMessage).
Result<void, DbErrorWriteNonRetriable> ValidateMessage(const core::JoinSetId& join_set_id,
                                                       const core::MessageReceived& message);
Result<AppendMessageOutcome, DbErrorWrite> RedeliveryOutcome(
    const core::JoinSetResponseEvent& existing, const core::JoinSetId& join_set_id,
    const core::MessageReceived& message);
DbErrorWrite FinishedRefusesMessage();

// A child's own outcome (AppendBatchRespondToParent): the response names
// the execution whose events it writes (ValidationFailed otherwise) and is
// addressed as CheckResponseAddressee requires.
Result<void, DbErrorWrite> CheckChildResponse(const AppendEventsToExecution& events,
                                              const AppendResponseToExecution& response);

// The shape of a StepWrite, checked before anything is read: something to
// write (ValidationFailed "empty batch": no event and no outcome, or
// children or locks without the events that request them), each outcome's
// events non-empty ("empty batch") and its response its own
// (CheckChildResponse), the children requested by `batch`
// (ValidateChildCreation). The backends check the rest (versions, states,
// the requests a response answers) as they write.
Result<void, DbErrorWrite> ValidateStepWrite(const StepWrite& write);

// The response AppendBatchRespondToParent records for `response`.
core::JoinSetResponseEventOuter ChildFinishedResponse(const AppendResponseToExecution& response);

}  // namespace stele::storage
