// A manual compatibility check of `python -m sai_go.gtp` with Sabaki's own GTP client library (@sabaki/gtp: the
// Controller that starts the engine and the ControllerStateTracker that Sabaki uses to keep an engine in step with
// its board).  Not part of the test suite (it needs npm); see sai_go/README.md ("GTP engine") for the command.
//
//   mkdir -p /tmp/sabaki-check && cd /tmp/sabaki-check && npm init -y && npm install @sabaki/gtp@3.0.0
//   NODE_PATH=/tmp/sabaki-check/node_modules node sai_go/sabaki_check.js RUN_DIR [PYTHON]
//
// It plays the engine against itself through genmove as Sabaki does, syncs the engine to SGF-like histories (a
// handicap, then one move shorter, which the tracker reaches by undo, then another line), asks for final_score and
// SAI's own commands, and exits non-zero on any failure.

const assert = require('assert')
const {Controller, ControllerStateTracker} = require('@sabaki/gtp')

async function main() {
  const [run, python = '.venv/bin/python'] = process.argv.slice(2)
  if (!run) throw new Error('usage: node sai_go/sabaki_check.js RUN_DIR [PYTHON]')
  const controller = new Controller(python, ['-m', 'sai_go.gtp', '--checkpoint', run, '--simulations', '8'])
  const tracker = new ControllerStateTracker(controller)
  const log = []
  controller.on('command-sent', ({command}) => log.push(`> ${command.name} ${(command.args || []).join(' ')}`))
  controller.on('response-received', ({response}) =>
    log.push(`< ${response.error ? '?' : '='} ${response.content.replace(/\n/g, ' | ')}`))
  controller.start()
  const send = async (name, ...args) => {
    const response = await tracker.queueCommand({name, args})
    assert(!response.error, `${name} ${args.join(' ')} failed: ${response.content}`)
    return response.content
  }
  try {
    // What Sabaki asks an engine when it attaches it.
    for (const name of ['name', 'version', 'protocol_version']) await send(name)
    assert(await tracker.knowsCommand('genmove') && await tracker.knowsCommand('undo'))
    assert(await tracker.knowsCommand('fixed_handicap') && await tracker.knowsCommand('time_settings'))

    // A new game at komi 9.5: Sabaki syncs board size, komi and the (empty) history, then lets the engine play.
    await tracker.sync({boardsize: [7, 7], komi: 9.5, history: []})
    const moves = []
    for (let ply = 0; ply < 12; ply++) {
      const colour = ply % 2 === 0 ? 'B' : 'W'
      const vertex = await send('genmove', colour)
      assert(/^([A-HJ-T][0-9]+|pass)$/i.test(vertex), `genmove ${colour} gave ${vertex}`)
      moves.push({name: 'play', args: [colour, vertex.toUpperCase()]})
    }
    assert.deepStrictEqual(tracker.state.history, moves)
    const score = await send('final_score')
    assert(/^(B\+|W\+)[0-9.]+$|^0$/.test(score), `final_score: ${score}`)
    const estimate = await send('sai-estimate_score')
    const winrate = parseFloat(await send('sai-winrate', '9.5'))
    assert(winrate >= 0 && winrate <= 1)

    // Sabaki loads an SGF with two handicap stones and some moves: the tracker replays it (clear_board, ...).
    const handicapGame = [{name: 'set_free_handicap', args: ['C3', 'E5']},
      {name: 'play', args: ['W', 'D4']}, {name: 'play', args: ['B', 'C5']}, {name: 'play', args: ['W', 'E3']}]
    await tracker.sync({boardsize: [7, 7], komi: 0.5, history: handicapGame})
    const board = await send('showboard')
    assert(board.includes('komi 0.5') && board.includes('Black to move'), board)
    // One move back (the tracker sends undo), then forward along another line.
    const sent = log.length
    await tracker.sync({history: handicapGame.slice(0, 3)})
    assert(log.slice(sent).some(line => line.startsWith('> undo')), 'the tracker did not undo')
    assert((await send('showboard')).includes('White to move'))
    await tracker.sync({history: [...handicapGame.slice(0, 3), {name: 'play', args: ['W', 'D3']}]})
    const reply = await send('genmove', 'B')
    const final = await send('final_score')
    console.log(log.join('\n'))
    console.log(`\nOK: 12 genmoves, final_score ${score}, sai-estimate_score ${estimate}, sai-winrate 9.5 ${winrate}; ` +
      `handicap history synced, one move undone, another played; genmove B ${reply}, final_score ${final}`)
  } finally {
    await controller.stop()
  }
}

main().catch(error => {
  console.error(`FAILED: ${error.message}`)
  process.exit(1)
})
